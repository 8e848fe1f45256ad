import { Injectable } from '@nestjs/common';
import { DataSource, In, Repository } from 'typeorm';
import { UserEntity } from './user.entity';

@Injectable()
export class UsersRepository {
  private readonly repo: Repository<UserEntity>;

  constructor(dataSource: DataSource) {
    this.repo = dataSource.getRepository(UserEntity);
  }

  findById(id: string): Promise<UserEntity | null> {
    return this.repo.findOneBy({ id });
  }

  findByIds(ids: string[]): Promise<UserEntity[]> {
    return ids.length ? this.repo.findBy({ id: In(ids) }) : Promise.resolve([]);
  }

  findByLogin(login: string): Promise<UserEntity | null> {
    return this.repo.createQueryBuilder('u').where('lower(u.login) = lower(:login)', { login }).getOne();
  }

  findByGithubId(githubId: string): Promise<UserEntity | null> {
    return this.repo.findOneBy({ githubId });
  }

  save(user: Partial<UserEntity>): Promise<UserEntity> {
    return this.repo.save(this.repo.create(user));
  }
}
